package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/e2e/framework"
	"github.com/cozystack/tenant-operator/e2e/world"
	tenantv1 "github.com/cozystack/tenant-operator/operator/apis/tenant/v1alpha1"
)

func TestDebugWholeTenant(t *testing.T) {
	ctx := context.Background()
	bin, _ := world.BinDir()
	w, err := newWorld(ctx, "dbg-tenant", 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop(true)
	url, _, _ := framework.PushPackages(ctx, w)
	tn, err := framework.StartTenant(ctx, w, bin+"/tenant-operator", framework.SeedConfig(w))
	if err != nil {
		t.Fatal(err)
	}
	tn.WaitForLeader(ctx)
	tn.WaitForBundleKind(ctx)
	start := time.Now()
	tn.ApplyBundle(ctx, framework.Bundle(w, url))
	go tn.RunFlux(ctx)
	c, _ := client.New(w.Config, client.Options{Scheme: framework.Scheme()})
	helmv2.AddToScheme(c.Scheme())
	seen := map[string]bool{}
	for time.Since(start) < 60*time.Second {
		b := &tenantv1.TenantBundle{}
		c.Get(ctx, client.ObjectKey{Name: "tenant"}, b)
		for _, cond := range b.Status.Conditions {
			k := cond.Type + "=" + string(cond.Status) + "/" + cond.Reason
			if !seen[k] {
				seen[k] = true
				fmt.Printf("%6.2fs TB %s %s\n", time.Since(start).Seconds(), k, cond.Message)
			}
		}
		var hrs helmv2.HelmReleaseList
		c.List(ctx, &hrs)
		for _, hr := range hrs.Items {
			for _, cond := range hr.Status.Conditions {
				k := hr.Name + " " + cond.Type + "=" + string(cond.Status) + "/" + cond.Reason
				if !seen[k] {
					seen[k] = true
					fmt.Printf("%6.2fs HR %s %.80s\n", time.Since(start).Seconds(), k, cond.Message)
				}
			}
			if !seen["created "+hr.Name] {
				seen["created "+hr.Name] = true
				fmt.Printf("%6.2fs HR created %s\n", time.Since(start).Seconds(), hr.Name)
			}
		}
		if seen["AddonsReady=True/Succeeded"] {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
}
