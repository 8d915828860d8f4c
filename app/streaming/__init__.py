"""The humanoid stream: GR00T-WholeBodyControl's ZMQ wire protocol, the operator's 3-point and
its retargeting to the Unitree G1, the publisher, state feedback, the inspector and a preview.

The modules are imported by path (`app.streaming.protocol`, `.publisher`, ...): importing this
package loads neither ZMQ nor MuJoCo.
"""
