"""``export_for_ipu_serving``: the Keras extension method that exports a model for serving."""

from __future__ import annotations

from typing import Any


class ServingExtension:
    """Adds ``export_for_ipu_serving`` to models created in an IPUStrategy scope."""

    def export_for_ipu_serving(
        self,
        export_dir: Any,
        batch_size: int | None = None,
        output_names: Any = None,
        preprocessing_step: Any = None,
        preprocessing_step_signature: Any = None,
        postprocessing_step: Any = None,
        postprocessing_step_signature: Any = None,
    ) -> Any:
        """Export this model for serving (see :func:`ipusim.serving.export_keras`).

        Args:
            export_dir: a new or empty directory.
            batch_size: samples per request; default: the batch size of the model's inputs.
            output_names: names for the outputs.
            preprocessing_step / postprocessing_step (and their ``_signature``): functions run
                on the host before / after the IPU program (:mod:`ipusim.serving.host_steps`).

        Returns:
            The loaded export: call it with one request; ``.timing`` has the simulated figures.
        """
        from ipusim.serving import export_keras

        return export_keras(
            self,
            export_dir,
            batch_size=batch_size,
            output_names=output_names,
            preprocessing_step=preprocessing_step,
            preprocessing_step_signature=preprocessing_step_signature,
            postprocessing_step=postprocessing_step,
            postprocessing_step_signature=postprocessing_step_signature,
        )
