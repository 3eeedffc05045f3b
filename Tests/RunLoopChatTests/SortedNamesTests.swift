import Testing

@testable import RunLoopChat

/// The stores' contacts are sorted lists merged (SortedNames): the user's own name is taken out of
/// the union by halving, so it must come out wherever it sorts, and nothing else with it.
@Suite("Sorted names")
struct SortedNamesTests {
    @Test("the union of sorted lists is each name once in byte order, without the excluded name wherever it sorts")
    func unionWithout() {
        let lists = [["ann", "cat", "eve", "zed"], ["ben", "cat", "dan"], ["Émile", "ann"].sorted { SortedNames.order($0, $1) < 0 }]
        let all = ["ann", "ben", "cat", "dan", "eve", "zed", "Émile"]
        #expect(SortedNames.union(lists, without: "nobody") == all)
        for excluded in all + ["", "a", "zzz", "cau"] {
            #expect(SortedNames.union(lists, without: excluded) == all.filter { $0 != excluded }, "\(excluded)")
            #expect(SortedNames.union([lists[0]], without: excluded) == lists[0].filter { $0 != excluded }, "\(excluded), one list")
        }
        #expect(SortedNames.union([], without: "ann").isEmpty)
        #expect(SortedNames.union([["ann"]], without: "ann").isEmpty)
    }
}
