package v1alpha1

// Condition types a TenantBundle carries. Ready, Reconciling and Stalled are
// the kstatus trio; the tier conditions say which part of the cluster is up.
const (
	ReadyCondition       = "Ready"
	ReconcilingCondition = "Reconciling"
	StalledCondition     = "Stalled"

	// NetworkReadyCondition is True once every enabled component of the
	// network tier (CNI, kube-proxy, CoreDNS) has its workloads Ready.
	NetworkReadyCondition = "NetworkReady"
	// VariantResolvedCondition is True once the cloud variant is known;
	// Unknown while nodes give no signal yet (the network tier proceeds).
	VariantResolvedCondition = "VariantResolved"
	// CloudReadyCondition is True once the variant's tenant-side components
	// are Ready and the effects of its management-side ones are seen.
	CloudReadyCondition = "CloudReady"
	// SourceReadyCondition is True once the packages artifact is pulled and
	// verified.
	SourceReadyCondition = "SourceReady"
	// AddonsReady is True once every enabled addon's Package is Ready,
	// that is, all its HelmReleases are Ready in the tenant's Flux. It is
	// not part of Ready: Ready says the cluster is bootstrapped (network
	// and cloud), and one failing optional addon must not say otherwise.
	AddonsReadyCondition = "AddonsReady"
	// CatalogReadyCondition is True once the catalog PackageSources of
	// spec.catalog.sources are registered. Like AddonsReady, not part of
	// Ready.
	CatalogReadyCondition = "CatalogReady"
)

// Labels on the PackageSources and Packages the operator writes.
const (
	// AddonLabel marks an addon's PackageSource and Package, with the
	// addon's name. Addons are vouched for by the bundle and chosen through
	// the TenantBundle; every other Package is a catalog app.
	AddonLabel = "tenant.cozystack.io/addon"
	// CatalogLabel marks a PackageSource registered from
	// spec.catalog.sources.
	CatalogLabel = "tenant.cozystack.io/catalog"
)

// Reasons. Stalled reasons mean the operator cannot fix the problem itself:
// only a change of spec (or of the artifact it names) can.
const (
	ReasonSucceeded          = "Succeeded"
	ReasonProgressing        = "Progressing"
	ReasonInstalling         = "Installing"
	ReasonWaitingForWorkload = "WaitingForWorkloads"
	ReasonDependencyNotReady = "DependencyNotReady"

	ReasonInvalidSpec        = "InvalidSpec"
	ReasonUnknownComponent   = "UnknownComponent"
	ReasonUnknownBundle      = "UnknownBundle"
	ReasonValuesRejected     = "ValuesRejected"
	ReasonArtifactFailed     = "ArtifactFailed"
	ReasonDigestMismatch     = "DigestMismatch"
	ReasonChartInvalid       = "ChartInvalid"
	ReasonInstallFailed      = "InstallFailed"
	ReasonComponentsNotReady = "ComponentsNotReady"

	ReasonVariantResolved = "VariantResolved"
	ReasonVariantUnknown  = "WaitingForNodes"
	ReasonUnknownVariant  = "UnknownVariant"
	ReasonMixedBackends   = "MixedBackends"
	ReasonVariantMismatch = "VariantMismatch"
	ReasonBackendChange   = "BackendChangeRefused"
	ReasonWaitingForCloud = "WaitingForCloud"

	ReasonAddonsNotReady     = "AddonsNotReady"
	ReasonAddonFailed        = "AddonFailed"
	ReasonUnknownAddon       = "UnknownAddon"
	ReasonDependencyDisabled = "DependencyDisabled"
	// ReasonMissingPlatformFacts: an enabled addon needs a spec.platform
	// field that the TenantBundle lacks.
	ReasonMissingPlatformFacts = "MissingPlatformFacts"
	// ReasonWaitingForNetwork is AddonsReady's and CatalogReady's reason
	// (status Unknown) until the network tier is Ready: their controllers
	// start only then.
	ReasonWaitingForNetwork = "WaitingForNetwork"

	ReasonCatalogConflict = "CatalogSourceConflict"
)

// IsAddonRefusal says whether an AddonsReady reason is a refused spec (only
// a spec change helps): the TenantBundle controller turns it into Stalled,
// and `kubectl tenant addons` reports it.
func IsAddonRefusal(reason string) bool {
	return reason == ReasonUnknownAddon || reason == ReasonDependencyDisabled
}
