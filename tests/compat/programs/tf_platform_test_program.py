"""A unit-test file written as TensorFlow's own are (``tensorflow.python.platform.test``): run it
with ``ipusim run``; ``test.main()`` runs the test cases named on the command line (all of them
by default), and the process exits with unittest's status."""

import os

import numpy as np
import tensorflow as tf
from tensorflow.python.platform import test


class SoftmaxTest(test.TestCase):
    def testSoftmaxMatchesNumpy(self):
        x = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, -1.0]], np.float32)
        expected = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)
        self.assertAllClose(expected, tf.nn.softmax(x))
        self.assertAllEqual(tf.argmax(x, axis=1), [2, 0])

    def testNestedStructures(self):
        got = self.evaluate({"a": tf.constant([1.0, 2.0]), "b": (tf.constant(3),)})
        self.assertAllClose({"a": [1.0, 2.0], "b": (3,)}, got)
        self.assertNotAllClose([1.0, 2.0], [1.0, 2.1])
        self.assertNear(1.0, 1.05, 0.1)
        self.assertArrayNear([1.0, 2.0], [1.01, 1.99], 0.02)

    def testFailedComparisonsRaise(self):
        with self.assertRaises(AssertionError):
            self.assertAllClose([1.0], [1.0 + 1e-3])
        with self.assertRaises(AssertionError):
            self.assertAllEqual([1, 2], [1, 3])
        with self.assertRaises(AssertionError):
            self.assertAllGreater([1.0, 0.5], 0.7)

    def testTempDirAndMock(self):
        folder = self.get_temp_dir()
        self.assertTrue(os.path.isdir(folder))
        self.assertEqual(folder, self.get_temp_dir())
        with test.mock.patch.dict("os.environ", {"IPUSIM_PLATFORM_TEST": "1"}):
            self.assertEqual(os.environ["IPUSIM_PLATFORM_TEST"], "1")
        self.assertNotIn("IPUSIM_PLATFORM_TEST", os.environ)

    def testSeedsStartFromTensorFlowsDefault(self):
        print("FIRST_DRAW", repr(float(np.random.rand())))


class DeliberateFailure(test.TestCase):
    def testWrongValue(self):
        self.assertAllClose([1.0, 2.0], [1.0, 2.5])


if __name__ == "__main__":
    test.main()
