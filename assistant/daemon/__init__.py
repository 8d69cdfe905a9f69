"""The daemon (SPEC §4): work queue, scheduled jobs, file triggers and the control API.

Nothing is imported here, so `import assistant.daemon.jobs` (the job store's reference)
and the light CLI path stay cheap; `assistant.daemon.process.run` starts the daemon.
"""
