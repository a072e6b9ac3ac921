"""Every figure and number of README.md and docs/ comes from here.

Each figure of ``docs/images`` belongs to an artefact (:mod:`docs.build.registry`): a function
that simulates what the figure shows and returns the plotted series as tables, and a function
that draws the PNGs from that run. Each table is committed beside its image (``STEM.csv``), so
``tests/docs/test_docs_fresh.py`` regenerates the cheap ones and compares them with the committed
files exactly, and checks each number the prose quotes (:mod:`docs.build.claims`) against them.

Run: ``python -m docs.build [NAME ...]`` (every artefact when none is named; ``--list``).
"""
