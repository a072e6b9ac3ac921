"""Write with ipusim the summaries ``generate.py`` writes with TensorFlow (for ``check.py``).

    PYTHONPATH=. python bench/tf_summary/write_ipusim.py OUT_DIR

``OUT_DIR/summary`` gets the ``tf.summary`` events of :func:`generate.write_summary` and
``OUT_DIR/keras/{train,validation}`` the Keras ``TensorBoard`` callback's, for the same fit.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

from ipusim.compat import keras, tf

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generate  # noqa: E402  (this folder's fixture generator: the cases and the calls)


def main(argv: list[str]) -> int:
    out = Path(argv[0] if argv else "tf_summary_ipusim")
    generate.write_summary(tf, out / "summary")
    keras.backend.clear_session()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        generate.write_keras(tf, keras, out / "keras")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
