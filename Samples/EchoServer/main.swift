print("echo-server: not built yet (issue 5)")
