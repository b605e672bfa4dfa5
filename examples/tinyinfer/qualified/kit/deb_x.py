"""Fallback for `dpkg-deb -x DEB DIR` where dpkg-deb is missing: unpack a .deb's data.tar.* into DIR."""
import io, sys, tarfile

deb, dest = sys.argv[1], sys.argv[2]
with open(deb, "rb") as f:
    assert f.read(8) == b"!<arch>\n", deb
    while True:
        head = f.read(60)
        if len(head) < 60:
            raise SystemExit(f"{deb}: no data.tar member")
        name, size = head[:16].decode().strip().rstrip("/"), int(head[48:58])
        body = f.read(size)
        if size % 2:
            f.read(1)
        if name.startswith("data.tar"):
            with tarfile.open(fileobj=io.BytesIO(body), mode="r:*") as t:
                kw = {"filter": "fully_trusted"} if hasattr(tarfile, "data_filter") else {}
                t.extractall(dest, **kw)
            break
