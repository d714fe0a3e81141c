"""`python -m bench [section ...]`: run the benchmark sections (all by default) and print their tables."""

from __future__ import annotations

import importlib
import platform
import subprocess
import sys
import time
import traceback

# In the order they print. A new section is a module with TITLE and run() -> list[Table], listed here.
SECTIONS = ("bench.users", "bench.stages", "bench.placement", "bench.tokens", "bench.assemble", "bench.peers", "bench.web",
            "bench.patterns", "bench.stall", "bench.server_start")


def main(argv: list[str]) -> int:
    alone = argv[:1] == ["--section"]  # a child of the run below: print the one section without the header
    argv = argv[1:] if alone else argv
    modules = [importlib.import_module(name) for name in SECTIONS]
    by_title = {module.TITLE: module for module in modules}
    unknown = [name for name in argv if name not in by_title]
    if unknown:
        print(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(by_title)}", file=sys.stderr)
        return 2
    chosen = [by_title[name] for name in argv] if argv else modules

    if not alone:
        print(f"Prompt Assembly Studio benchmark - Python {platform.python_version()} on {platform.machine()}, "
              f"{platform.system()}" + ("; each section in its own interpreter" if len(chosen) > 1 else ""))
    failed = []
    started = time.perf_counter()
    if len(chosen) > 1:
        # Each section in its own interpreter: one section's imports and caches (the tokens section's other
        # tokenizers, the engine's memos of its 10,000-message requests, Django) are live objects that every later
        # collector pass would walk, a cost that belongs to no other section's figures. The collection before each
        # timed run (bench.timing) walks them too and leaves the CPU caches cold: after the tokens section, a small
        # assemble() measured 0.92 ms after it against 0.41 ms without it, in either heap.
        for module in chosen:
            sys.stdout.flush()
            if subprocess.run([sys.executable, "-m", "bench", "--section", module.TITLE]).returncode:
                failed.append(module.TITLE)
        print(f"\ntotal {time.perf_counter() - started:.1f} s" + (f"; FAILED: {', '.join(failed)}" if failed else ""))
        return 1 if failed else 0
    for module in chosen:
        print(f"\n== {module.TITLE} ==")
        section_started = time.perf_counter()
        try:
            tables = module.run()
        except Exception:  # report the section and go on; the exit status says something failed
            failed.append(module.TITLE)
            print(f"FAILED: section {module.TITLE}\n{traceback.format_exc()}")
            continue
        for table in tables:
            print()
            print(table.render())
        print(f"\n({module.TITLE}: {time.perf_counter() - section_started:.1f} s)")
    if not alone:
        print(f"\ntotal {time.perf_counter() - started:.1f} s" + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
