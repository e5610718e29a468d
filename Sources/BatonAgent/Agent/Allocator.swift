#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// The C library's allocator, for what Swift's Glibc module leaves out.
enum Allocator {
    /// glibc's `malloc_trim` (in `<malloc.h>`, which the Glibc module does not import); nil on other C libraries.
    private static let trim: (@convention(c) (Int) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
    }()

    /// Returns the free memory the allocator keeps in its arenas to the system. A few milliseconds; call it after a
    /// burst of work has ended, not on a hot path.
    static func giveBackFreeMemory() {
        _ = trim?(0)
    }
}
