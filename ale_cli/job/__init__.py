"""``ale run``: a whole job from one YAML file (:mod:`.spec`), every step cached with a
manifest (:mod:`.runner`), under a lock (:mod:`.lock`) in a run directory that changes
as a whole (:mod:`.transaction`)."""

from __future__ import annotations

from ale_cli.job.runner import JobResult, run_job
from ale_cli.job.spec import JobError, JobSpec, read_job

__all__ = ["JobError", "JobResult", "JobSpec", "read_job", "run_job"]
