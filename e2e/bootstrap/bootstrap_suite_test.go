// Package bootstrap is the e2e suite of the bootstrap tier: a tenant world
// whose nodes stay NotReady until the CNI runs, the operator running from
// its own seeded Deployment with its ServiceAccount's rights, and the
// stand-in packages artifact in a real registry.
package bootstrap

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/cozystack/tenant-operator/e2e/framework"
)

// operatorBin is built once for every spec.
var operatorBin string

func TestBootstrap(t *testing.T) {
	RegisterFailHandler(Fail)
	framework.SetSuiteDefaults()
	RunSpecs(t, "Bootstrap tier suite")
}

var _ = BeforeSuite(func() {
	var err error
	operatorBin, err = framework.BuildOperator(GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
})

// failed keeps the worlds' logs when any spec failed.
var failed bool

var _ = ReportAfterEach(func(r SpecReport) {
	if r.Failed() {
		failed = true
	}
})
