package vmcp

import (
	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

// optimizerEmbeddingService points the optimizer at the EmbeddingServer
// spec.embeddingServerRef names, as ToolHive's operator does: the
// reference enables the optimizer (an empty section when spec.config has
// none, which then gets no schema default, as in ToolHive where the
// section is added after the API server's defaulting) and its URL
// replaces any embeddingService written by hand. url is "" without a
// reference (the build only happens once the referenced server is ready).
func optimizerEmbeddingService(cfg *schema.VMCPConfig, v *thv1.VirtualMCPServer, url string) {
	if v.Spec.EmbeddingServerRef == nil || url == "" {
		return
	}
	if cfg.Optimizer == nil {
		cfg.Optimizer = &thv1.VMCPOptimizer{}
	}
	cfg.Optimizer.EmbeddingService = url
}
