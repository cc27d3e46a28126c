"""The server side of the example OpenEnv environment package."""
