package host

import (
	"context"

	"github.com/kimiapp/kimi/modules/sdk"
)

// revocableProposals refuses every call once its module closed, like the
// other ports: a closed module cannot propose with a port it kept.
type revocableProposals struct {
	inst *instance
	p    sdk.Proposals
}

var _ sdk.Proposals = (*revocableProposals)(nil)

func (r *revocableProposals) Snapshot(ctx context.Context, target string, actor sdk.ProposalActor) (sdk.ConfigSnapshot, error) {
	if r.inst.revoked() {
		return sdk.ConfigSnapshot{}, r.inst.revokedErr("proposals")
	}
	return r.p.Snapshot(ctx, target, actor)
}

func (r *revocableProposals) Propose(ctx context.Context, p sdk.Proposal) (sdk.ProposalRef, error) {
	if r.inst.revoked() {
		return sdk.ProposalRef{}, r.inst.revokedErr("proposals")
	}
	return r.p.Propose(ctx, p)
}

func (r *revocableProposals) Get(ctx context.Context, id string, actor sdk.ProposalActor) (*sdk.ProposalRef, error) {
	if r.inst.revoked() {
		return nil, r.inst.revokedErr("proposals")
	}
	return r.p.Get(ctx, id, actor)
}
