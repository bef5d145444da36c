"""`CheckpointException`: the one error a failed distributed save or load raises."""

__all__ = ["CheckpointException"]


class CheckpointException(Exception):
    """A save or load failed on one or more ranks.  ``failures`` maps each failing rank to
    its exception; the message names every rank and what went wrong there (the keys, files
    or shapes involved), and every rank of the job raises the same exception."""

    def __init__(self, msg, failures):
        super().__init__(msg, failures)
        self._failures = dict(failures)

    @property
    def failures(self):
        return self._failures

    def __str__(self):
        lines = [f"{self.args[0]}: failed on rank(s) {sorted(self._failures)}"]
        for rank, exc in sorted(self._failures.items()):
            lines.append(f"  rank {rank}: {type(exc).__name__}: {exc}")
        return "\n".join(lines)
