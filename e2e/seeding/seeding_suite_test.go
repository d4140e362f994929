// Package seeding is the e2e suite of the management side: a management
// world with a stand-in Kamaji TenantControlPlane CRD and the real
// tenant-seeder process, and a tenant world whose operator runs from the
// Deployment the seeder put there.
package seeding

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/cozystack/tenant-operator/e2e/framework"
)

var operatorBin, seederBin, cliBin string

func TestSeeding(t *testing.T) {
	RegisterFailHandler(Fail)
	framework.SetSuiteDefaults()
	RunSpecs(t, "Seeding suite")
}

var _ = BeforeSuite(func() {
	dir := GinkgoT().TempDir()
	var err error
	operatorBin, err = framework.BuildOperator(dir)
	Expect(err).NotTo(HaveOccurred())
	seederBin, err = framework.Build(dir, "tenant-seeder")
	Expect(err).NotTo(HaveOccurred())
	cliBin, err = framework.Build(dir, "kubectl-tenant")
	Expect(err).NotTo(HaveOccurred())
})

var _ = framework.TrackFailures()
