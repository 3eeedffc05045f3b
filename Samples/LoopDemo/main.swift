import RunLoopKit
