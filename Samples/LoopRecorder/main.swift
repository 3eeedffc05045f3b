print("loop-record: not built yet (issue 3)")
