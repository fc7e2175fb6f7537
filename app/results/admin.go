package results

import "context"

// Subscriptions returns every subscription with its counts, ordered by
// module, name and guild. Fast with 100k notifications (the admin's p99
// budget is 20 ms): counts come from the covering index.
func (s *Service) Subscriptions(ctx context.Context) ([]Subscription, error) {
	return nil, errNotImplemented
}

// Subscription returns one subscription (ErrNotFound when none).
func (s *Service) Subscription(ctx context.Context, k SubKey) (Subscription, error) {
	return Subscription{}, errNotImplemented
}

// Notifications returns a page of a subscription's notifications, newest
// publication first (keyset pagination on published time and id).
func (s *Service) Notifications(ctx context.Context, k SubKey, f NotificationFilter) (NotificationPage, error) {
	return NotificationPage{}, errNotImplemented
}

// RetryNow makes the subscription's retry and blocked notifications (ids
// nil: all of them; else those ids) due now, audited; it returns how many.
func (s *Service) RetryNow(ctx context.Context, k SubKey, ids []string, a Actor) (int, error) {
	return 0, errNotImplemented
}

// SetPaused pauses or resumes the subscription's delivery, audited: a
// paused subscription's notifications are not claimed (nor expire
// differently); resuming makes them due at once.
func (s *Service) SetPaused(ctx context.Context, k SubKey, paused bool, a Actor) error {
	return errNotImplemented
}

// Unsubscribe deletes the subscription and every notification of it,
// audited with how many were deleted; a running module's handler for it
// is unregistered (the module subscribes again at its next start).
func (s *Service) Unsubscribe(ctx context.Context, k SubKey, a Actor) (int, error) {
	return 0, errNotImplemented
}

// PurgeExpired deletes the subscription's expired notifications, audited;
// it returns how many.
func (s *Service) PurgeExpired(ctx context.Context, k SubKey, a Actor) (int, error) {
	return 0, errNotImplemented
}
