import Benchmark
let benchmarks = {
    Benchmark("probe") { _ in blackHole(1) }
}
