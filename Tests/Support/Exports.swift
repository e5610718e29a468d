// What tests share with `baton-debug`, which cannot link this module (it imports Swift Testing): the stream tally
// and the seeded generator.
@_exported import BatonTestKit
