"""``ale run``: a whole job from one YAML file (:mod:`.spec`), run under a lock
(:mod:`.lock`) with every step cached and a manifest (:mod:`.runner`), the run
directory changing as a whole (:mod:`.transaction`), its history entries marked as
ours (:mod:`.history`)."""

from __future__ import annotations

from ale_cli.job.runner import JobResult, run_job
from ale_cli.job.spec import JobError, JobSpec, read_job

__all__ = ["JobError", "JobResult", "JobSpec", "read_job", "run_job"]
