// RunLoopNet: TCP listeners and connections as port sources on RunLoopKit (being built for issue 5).
