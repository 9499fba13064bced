"""The Gateway API passes: classes, listeners, references, route attachment, HTTPRoute and
GRPCRoute rules."""
