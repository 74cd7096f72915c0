"""What people read: the figures, the findings page and the session viewer of an experiment.

Reads `tables/`, `stats/` and `sessions/`; writes `figures/` (`figures`, rules `plots` and
`validity_figure`), `findings/index.html` (`findings`: what the run concluded, on one page) and
`viewer/` (`viewer`: every session to read in a browser, offline, from `viewer_assets/`).
"""
