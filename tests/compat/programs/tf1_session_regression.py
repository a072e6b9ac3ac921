"""A TF1-style program as IPU TensorFlow 2 runs it through ``tf.compat.v1``: a linear regression
built in a ``tf.Graph``, fed through placeholders and trained by ``Session.run`` of a
``GradientDescentOptimizer.minimize`` op. Prints ``RESULT`` lines a test compares with NumPy."""

import numpy as np
import tensorflow as tf

rng = np.random.default_rng(3)
xs = rng.standard_normal((16, 3)).astype(np.float32)
ys = (xs @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3).astype(np.float32)

with tf.Graph().as_default() as graph:
    x = tf.compat.v1.placeholder(tf.float32, shape=[None, 3], name="x")
    y = tf.compat.v1.placeholder(tf.float32, shape=[None, 1], name="y")
    w = tf.Variable(np.full((3, 1), 0.1, np.float32), name="w")
    b = tf.Variable(np.zeros((1,), np.float32), name="b")
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
    train = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(loss)
    init = tf.compat.v1.global_variables_initializer()
    assert tf.compat.v1.get_default_graph() is graph

    with tf.compat.v1.Session() as sess:
        try:
            sess.run(loss, feed_dict={x: xs, y: ys})
        except tf.errors.FailedPreconditionError as error:
            print("RESULT uninitialised", type(error).__name__)
        sess.run(init)
        losses = []
        for _ in range(5):
            _, value = sess.run([train, loss], feed_dict={x: xs, y: ys})
            losses.append(float(value))
        print("RESULT losses", losses)
        trained = sess.run({"w": w, "b": b})
        print("RESULT w", trained["w"].ravel().tolist(), "b", trained["b"].tolist())
        sess.run(init)  # TF1: running the initializer again restores the initial values
        print("RESULT reset", sess.run(w).ravel().tolist())
        try:
            sess.run(loss, feed_dict={x: xs})
        except ValueError as error:
            print("RESULT missing feed", "y" in str(error))
