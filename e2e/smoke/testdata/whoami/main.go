// Command whoami is the process runner's test subject: it authenticates with
// whatever KUBECONFIG the runner wrote, asks the API server who it is, and
// reports what the runner resolved for it (env, rewritten paths).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	out := flag.String("out", "", "file to write the username to")
	serve := flag.Bool("serve", false, "keep running until SIGTERM after reporting")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, *out, *serve); err != nil {
		fmt.Fprintln(os.Stderr, "whoami:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out string, serve bool) error {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		clientcmd.NewDefaultClientConfigLoadingRules(), nil).ClientConfig()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	reqCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(reqCtx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	user := review.Status.UserInfo.Username
	fmt.Printf("server=%s\n", cfg.Host)
	fmt.Printf("username=%s\n", user)
	for _, k := range []string{"POD_NAME", "POD_NAMESPACE", "NODE_NAME", "GREETING", "CACHE_DIR"} {
		fmt.Printf("env %s=%s\n", k, os.Getenv(k))
	}
	if out != "" {
		if err := os.WriteFile(out, []byte(user+"\n"), 0o644); err != nil {
			return err
		}
		abs, _ := filepath.Abs(out)
		fmt.Printf("wrote=%s\n", abs)
	}
	if serve {
		fmt.Println("serving")
		<-ctx.Done()
		fmt.Println("terminating")
	}
	return nil
}
