#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import ServiceLifecycle

// The agent's long-running parts (issue 11 part 3; ARCHITECTURE "Services"): each is a `Service` with one `run()`,
// and ``Agent/build(_:)`` returns them in order (``AgentServices``) for the caller to run in one `ServiceGroup`
// (issue 26 item 1). The group shuts them down in the reverse of their order there: advertising first, so the
// goodbye of the current activity goes out while everything else still works, then roster sync, the app socket,
// and the sessions last. None of them polls: each loop sleeps on a ``Doorbell`` until something changes or its next
// deadline (part 8).

// `AppSocketService` (the app socket, the command lines' work, the reaper of the programs launched for apps, owning
// what it runs: issue 26 item 1) is in IPC/AppSocketService.swift, beside its ``ReapSchedule``.

// `SessionService` (the session listener, the links and their idle sweep, owning what it runs: issue 26 item 1) is in
// Session/SessionService.swift, beside its ``LinkSweep``.

// `SyncService` (roster sync, owning its state: issue 26 item 1) is in Sync/SyncService.swift, beside its
// ``RosterSyncSchedule``.

// `SearchService` (the search index, owning its state: issue 26 item 1) is in Search/SearchService.swift, beside its
// ``SearchQueue`` and ``SearchIndexUpkeep``.

// `DiscoveryService` (advertising and the nearby table, owning its state through its ``Discovery``: issue 26 item 1)
// is in Discovery/DiscoveryService.swift.

// `NotificationService` (desktop notifications, issue 16 part 2) is in Notifications/Agent+Notifications.swift, beside
// the ``NearbyFeed`` it gives BatonNotifications' notifier (issue 26 item 4).
