"""Generated protobuf and gRPC code of the discovery protocol (proto/generate.py)."""
