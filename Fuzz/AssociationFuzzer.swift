// libFuzzer entry point for the association-file readers of BatonRegistry: apple-app-site-association and
// assetlinks.json as a web server (or a hostile one) would send them. Since issue 11 they are read with JSONDecoder
// into a JSONTree (no JSONSerialization in the agent).
//
// Compiled together with BatonCore's sources and the association files of BatonRegistry into one module by
// scripts/fuzz.sh associations (not part of the package build: a fuzzer has no `main`, and the CMS verifier beside
// them needs swift-crypto). Every input goes through both readers, and a file that reads is asked to approve a URL;
// a trap, a sanitizer report, an untyped error or an error other than associationTooLarge / invalidAssociationFile
// stops the fuzzer with the input saved.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func associationFuzzerTestOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let data = Data(bytes: bytes, count: count)
    let url = URL(string: "https://example.com/wiki/Main_Page?action=view#top")
    do {
        let file = try AppSiteAssociation(json: data)
        for service in [AssociatedDomain.Service.appLinks, .activityContinuation, .webCredentials, .appClips] {
            _ = file.approval(of: "TEAM123456.org.example.app", for: service, url: url)
        }
    } catch let error as BatonRegistryError {
        precondition(error.code == .invalidAssociationFile || error.code == .associationTooLarge, "unexpected error: \(error)")
    } catch {
        preconditionFailure("untyped error: \(error)")
    }
    do {
        let links = try AssetLinks(json: data)
        _ = links.approval(ofSite: "https://example.com", relation: AssetLinks.handleAllURLs)
        _ = links.approval(ofAndroidApp: "org.example.app", fingerprint: "AB:CD", relation: AssetLinks.handleAllURLs)
    } catch let error as BatonRegistryError {
        precondition(error.code == .invalidAssociationFile || error.code == .associationTooLarge, "unexpected error: \(error)")
    } catch {
        preconditionFailure("untyped error: \(error)")
    }
    return 0
}
