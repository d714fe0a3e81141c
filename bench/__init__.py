"""Performance benchmark (`python -m bench`, quality.md "Performance"): generated fixtures at growing sizes.

Each section is a module with `TITLE` and `run() -> list[Table]`; `bench/__main__.py` lists the sections in order,
so a later section (assemble time, preview time) is one more module and one more line there. Timings are medians of
several runs (`bench.timing`), printed as plain text tables (`bench.report`) with the quality.md target beside each
figure where the spec gives one. Fixtures are generated in code from fixed seeds, so runs are comparable.
"""
