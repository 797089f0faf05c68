#!/usr/bin/env python3
"""Packs the PyPI wheels from a release directory (ci/release/local.sh DIR): one wheel per
archive there, holding that archive's `agent` binary as the wheel's script (what maturin's
`bindings = "bin"` makes, as ruff and uv ship), so pip, pipx and uvx put `agent` on PATH.
The binary is the release's own, byte for byte (no second build): the Linux ones are static
musl, tagged manylinux2014 and musllinux_1_2 both.

    ci/release/wheel.py RELEASE_DIR OUT NAME VERSION README    (prints each wheel's path)
"""
import base64
import hashlib
import io
import pathlib
import re
import sys
import tarfile
import zipfile

TAGS = {
    "x86_64-unknown-linux-musl": "manylinux_2_17_x86_64.manylinux2014_x86_64.musllinux_1_2_x86_64",
    "aarch64-unknown-linux-musl": "manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_2_aarch64",
    "x86_64-apple-darwin": "macosx_10_12_x86_64",
    "aarch64-apple-darwin": "macosx_11_0_arm64",
}
# Fixed times: the same archive packs to the same wheel.
EPOCH = (1980, 1, 1, 0, 0, 0)


def digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def wheel(archive: pathlib.Path, target: str, out: pathlib.Path, name: str, version: str, readme: str) -> pathlib.Path:
    with tarfile.open(archive) as tar:
        member = tar.getmember(f"agent-{version}-{target}/agent")
        binary = tar.extractfile(member).read()
    dist = re.sub(r"[-_.]+", "_", name).lower()
    info = f"{dist}-{version}.dist-info"
    metadata = (
        "Metadata-Version: 2.1\n"
        f"Name: {name}\n"
        f"Version: {version}\n"
        "Summary: A synchronous, single-binary, non-interactive coding agent for CI and scripts (the `agent` command)\n"
        "License: MIT\n"
        "Requires-Python: >=3.8\n"
        "Project-URL: Source, https://github.com/OWNER/agent\n"
        "Classifier: Environment :: Console\n"
        "Classifier: License :: OSI Approved :: MIT License\n"
        "Classifier: Programming Language :: Rust\n"
        "Description-Content-Type: text/markdown\n"
        "\n" + readme
    )
    tag = f"py3-none-{TAGS[target]}"
    wheel_file = (
        "Wheel-Version: 1.0\n"
        "Generator: ci/release/wheel.py\n"
        "Root-Is-Purelib: false\n"
        + "".join(f"Tag: py3-none-{t}\n" for t in TAGS[target].split("."))
    )
    files = [
        (f"{dist}-{version}.data/scripts/agent", binary, 0o755),
        (f"{info}/METADATA", metadata.encode(), 0o644),
        (f"{info}/WHEEL", wheel_file.encode(), 0o644),
    ]
    record = "".join(f"{p},{digest(d)},{len(d)}\n" for p, d, _ in files) + f"{info}/RECORD,,\n"
    files.append((f"{info}/RECORD", record.encode(), 0o644))
    path = out / f"{dist}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for p, d, mode in files:
            zi = zipfile.ZipInfo(p, EPOCH)
            zi.external_attr = (0o100000 | mode) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, d)
    return path


def main() -> int:
    if len(sys.argv) != 6:
        print("usage: ci/release/wheel.py RELEASE_DIR OUT NAME VERSION README", file=sys.stderr)
        return 2
    rel, out, name, version, readme = sys.argv[1:]
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    text = pathlib.Path(readme).read_text()
    made = 0
    for target in TAGS:
        archive = pathlib.Path(rel) / f"v{version}" / f"agent-{version}-{target}.tar.gz"
        if not archive.exists():
            print(f"wheel.py: no {archive}; no wheel for {target}", file=sys.stderr)
            continue
        print(wheel(archive, target, out, name, version, text))
        made += 1
    if not made:
        print(f"wheel.py: no release archive in {rel}/v{version}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
