"""ipusim's custom-training-loop runtime: the IPU TensorFlow 2 API beyond Keras' ``fit``.

``tf.function`` / ``strategy.run`` / ``ipu_compiler.compile`` trace Python functions into the
graph IR (:mod:`.function`), which the numerics executor runs and the timing path lowers and
simulates (:mod:`.simulation`). Around it: the TensorFlow ops (:mod:`.ops`), ``GradientTape``
(:mod:`.tape`), infeeds and outfeeds (:mod:`.feeds`), on-device loops (:mod:`.loops`), the IPU
optimizer wrappers (:mod:`.optimizers`) and ``pipeline()`` (:mod:`.pipeline_op`).

The ``ipusim.compat`` namespaces (``tf``, ``ipu``) forward their custom-loop names here.
"""
