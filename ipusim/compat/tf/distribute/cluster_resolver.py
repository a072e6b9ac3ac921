"""``tf.distribute.cluster_resolver``: where the workers of a multi-worker job are, as
``IPUMultiWorkerStrategy(cluster_resolver)`` reads them (``cluster_spec()`` and ``task_id``)."""

from __future__ import annotations

from typing import Any

from ipusim.config._env import tf_config

__all__ = ["ClusterSpec", "SimpleClusterResolver", "TFConfigClusterResolver"]


class ClusterSpec:
    """``tf.train.ClusterSpec``: job name -> task addresses.

    Args:
        cluster: a mapping of job name to a list (or index -> address mapping) of addresses.
    """

    def __init__(self, cluster: Any) -> None:
        spec = cluster.as_dict() if isinstance(cluster, ClusterSpec) else dict(cluster or {})
        self._spec = {job: list(tasks.values()) if isinstance(tasks, dict) else list(tasks)
                      for job, tasks in spec.items()}  # fmt: skip

    def as_dict(self) -> dict[str, list[str]]:
        """The jobs and their addresses."""
        return {job: list(tasks) for job, tasks in self._spec.items()}

    @property
    def jobs(self) -> list[str]:
        return list(self._spec)

    def num_tasks(self, job_name: str) -> int:
        return len(self._spec.get(job_name, ()))

    def __bool__(self) -> bool:
        return bool(self._spec)

    def __repr__(self) -> str:
        return f"ClusterSpec({self._spec!r})"


class SimpleClusterResolver:
    """``tf.distribute.cluster_resolver.SimpleClusterResolver``: a given cluster and task."""

    def __init__(
        self, cluster_spec: Any, task_type: str | None = None, task_id: int | None = None,
        **kwargs: Any,
    ) -> None:  # fmt: skip
        self._cluster = ClusterSpec(cluster_spec)
        self.task_type = task_type
        self.task_id = task_id

    def cluster_spec(self) -> ClusterSpec:
        return self._cluster


class TFConfigClusterResolver(SimpleClusterResolver):
    """``tf.distribute.cluster_resolver.TFConfigClusterResolver``: the cluster and this task
    from the ``TF_CONFIG`` environment variable (read when constructed).

    Raises:
        ConfigurationError: TF_CONFIG is not a JSON object.
    """

    def __init__(
        self, task_type: str | None = None, task_id: int | None = None, **kwargs: Any
    ) -> None:
        parsed = tf_config() or {}
        task = parsed.get("task", {})
        super().__init__(
            parsed.get("cluster", {}),
            task_type if task_type is not None else task.get("type"),
            task_id if task_id is not None else int(task.get("index", 0)),
        )
