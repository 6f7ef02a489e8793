"""qoelab: measure how network QoS mechanisms change the quality of streamed video."""
