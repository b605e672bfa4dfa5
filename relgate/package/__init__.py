"""The package the commit ships: built, extracted safely, inspected, tested offline; then the
publish rehearsed (locked dry run, or an upload to a local index, install, import)."""
