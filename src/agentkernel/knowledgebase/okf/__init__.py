"""The Open Knowledge Format (OKF 0.2) representation of document stores."""
