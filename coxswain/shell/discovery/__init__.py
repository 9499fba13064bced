"""The gRPC discovery transport, both ends: the server the controller and ``serve`` run, the
client a proxy runs, the snapshot codec and resource form they share, and their mutual TLS."""
