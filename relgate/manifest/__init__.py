"""What the project declares, read and validated up front: project, builds, lanes and targets,
package, intentional changes, hosts; :class:`~relgate.manifest.workspace.Workspace` loads them all at once."""
