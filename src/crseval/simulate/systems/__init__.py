"""The systems under test: every agent kind a system's `agent` names, and the registry that selects one.

`agent_kind` (what an agent kind declares: `AgentKind`), `kinds` (the registry and a system's entry resolved
once), `agents` (template and LLM agents), `calibration` (systems of known behaviour that read the
ground truth), `chat` (a chat model answering by itself), `tools_agent` (a model that calls the catalog
toolkit), and recommenders of one's own: `external` (the protocol, reply checks and reply cache),
`http_system` (a JSON service) and `python_system` (a researcher's class). Reads the catalog index,
prompts and each system's config entry; writes only the external systems' reply cache.
"""
