"""Rendering JavaScript-built pages: which pages need a browser, rendering them, Splash's HTTP API."""
