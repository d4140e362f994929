// Package addons is the e2e suite of the addon tier: a bootstrapped tenant
// world whose addons are reconciled by the real source-controller and
// helm-controller, run by the process runner from the Flux manifests the
// operator applies, with charts served by the operator.
package addons

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/cozystack/tenant-operator/e2e/framework"
)

var operatorBin, cliBin string

func TestAddons(t *testing.T) {
	RegisterFailHandler(Fail)
	framework.SetSuiteDefaults()
	RunSpecs(t, "Addon tier suite")
}

var _ = BeforeSuite(func() {
	dir := GinkgoT().TempDir()
	var err error
	operatorBin, err = framework.BuildOperator(dir)
	Expect(err).NotTo(HaveOccurred())
	cliBin, err = framework.Build(dir, "kubectl-tenant")
	Expect(err).NotTo(HaveOccurred())
})

var _ = framework.TrackFailures()
