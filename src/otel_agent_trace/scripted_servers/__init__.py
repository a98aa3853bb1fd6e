"""Scripted loopback servers shipped with the package: the demo and the tests drive the real client
libraries over real HTTP against them (scripted_openai.py routes every wire format)."""
