"""Checks of the instrument: does each metric measure what it claims, and is the simulated user like people?

Reads the experiment's tables and sessions; writes `stats/validity.*` (`validity`: do the metrics order
the calibration systems as they were built?), `stats/human_agreement*` and `stats/scorecard.md`
(`agreement`, `human_agreement`, `scorecard`: do they agree with real users' verdicts and votes?),
`stats/user_realism.*` (`user_realism`: how far the simulated users' turns are from real users') and
`stats/user_audit.*` (`user_audit`: does every simulated turn read back as what it means?).
"""
