import BatonAssociations
import BatonRegistry
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What the association service is given of this agent, and what the agent keeps of it: the service's ``Trigger``
/// (`associations`) and the last ``AssociationFiles`` it sent, beside the registry and the router built from both
/// (`catalog`). The service holds no agent (issue 26 item 1): its closures hold the catalog alone.
extension Agent {
    /// The association service of this agent, made once by ``build(_:)``: it reads the cache at once, so the router
    /// trusts the files still valid before any fetch.
    func associationService() -> AssociationService {
        AssociationService(
            trigger: associations,
            policy: configuration.associations,
            cache: AssociationCache(stateFolder: store.folder),
            fetcher: Self.associationFetcher(configuration),
            wantedDomains: { [catalog] in AssociationFiles.wantedDomains(catalog.withLockedValue(\.registry)) },
            publish: { [catalog] files, now in
                let approvals = files.approvals(now: now)
                catalog.withLockedValue { catalog in
                    catalog.associations = files
                    catalog.router = ActivityRouter(registry: catalog.registry, approvals: approvals)
                }
            },
            logger: logger,
            clock: clock
        )
    }

    /// The fetcher `configuration` asks for (its --cacert files and the environment's, its --resolve rules and
    /// timeouts), or why there is none.
    static func associationFetcher(_ configuration: AgentConfiguration) -> Result<AssociationFetcher, AssociationFetchError> {
        let environment = ProcessInfo.processInfo.environment
        return Result {
            try AssociationFetcher(
                extraRootFiles: configuration.associationRootFiles + AssociationFetcher.rootFiles(environment: environment),
                resolve: configuration.associationResolve,
                connectTimeout: configuration.associations.connectTimeout,
                totalTimeout: configuration.associations.totalTimeout
            )
        }.mapError { $0 as? AssociationFetchError ?? AssociationFetchError(.tlsFailed, "\($0)") }
    }

    /// The folder the association service's cache is in (the agent watches it: `baton aasa fetch` writes it).
    var associationFolder: URL {
        AssociationCache(stateFolder: store.folder).folder
    }

    /// Where this agent would send an activity now, and why: the router the next continuation uses (tests).
    public func route(_ request: RouteRequest) -> RouteDecision {
        router.route(request)
    }

    /// The association records this agent holds, by domain (what `baton aasa status` shows from the cache).
    public func associationRecords() -> [AssociationRecord] {
        catalog.withLockedValue(\.associations).records
    }
}
