// Package catalog is the e2e suite of the cozy-in-cozy catalog: apps
// installed by a tenant admin from catalog PackageSources (registered by the
// management side through the TenantBundle, or by the tenant admin), run by
// the tenant's real Flux, with privileged apps held until confirmed.
package catalog

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/cozystack/tenant-operator/e2e/framework"
)

var operatorBin, blindOperatorBin, cliBin string

func TestCatalog(t *testing.T) {
	RegisterFailHandler(Fail)
	framework.SetSuiteDefaults()
	RunSpecs(t, "Catalog suite")
}

var _ = BeforeSuite(func() {
	dir := GinkgoT().TempDir()
	var err error
	operatorBin, err = framework.BuildOperator(dir)
	Expect(err).NotTo(HaveOccurred())
	cliBin, err = framework.Build(dir, "kubectl-tenant")
	Expect(err).NotTo(HaveOccurred())
	blindOperatorBin, err = framework.BuildTagged(dir, "tenant-operator", "classifierblind")
	Expect(err).NotTo(HaveOccurred())
})

var _ = framework.TrackFailures()
