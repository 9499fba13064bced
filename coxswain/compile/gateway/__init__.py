"""The Gateway API passes: classes, listeners, references, route attachment, HTTPRoute rules."""
