package dashboard_test

import (
	"strings"
	"testing"
)

// TestBrowserApproval: on both backends, an operator approves a flow
// waiting on an approval from its page (filling the resume form's field),
// and rejects another, in Chromium; screenshots of the form and of both
// outcomes are saved.
func TestBrowserApproval(t *testing.T) {
	eachBackend(t, siteOptions{}, func(t *testing.T, s *site) {
		b := newTab(t, s)
		name := strings.TrimPrefix(t.Name(), "TestBrowserApproval/")

		runID, w := s.startFlow(approvalFlow)
		b.open("/runs/" + runID)
		b.until("the approval form", `!!document.querySelector('#run-approvals form.approval button[value="approve"]')`)
		if eval[bool](b, `!!document.querySelector('[data-token=`+jsq(w.Token)+`]')`) {
			t.Error("the page offers the generic Resume dialog for the approval's hook")
		}
		b.screenshot(name + "-approval")
		// The comment is required: the browser keeps an empty one from
		// being sent.
		if eval[bool](b, `document.querySelector('#run-approvals input[name="f.comment"]').checkValidity()`) {
			t.Error("an empty comment passes the form's own check")
		}
		form := `#run-approvals form.approval`
		// Past the browser's check (as a script or an old browser would
		// send it), the API refuses it and the page says why, keeping
		// what was typed.
		b.setValue(eval[string](b, `document.querySelector('`+form+` input[name="approver"]').id`), "ada")
		eval[bool](b, `(() => { document.querySelector('`+form+` input[name="f.comment"]').required = false; return true })()`)
		b.clickToLoad(form + ` button[value="approve"]`)
		b.until("the refusal beside the form", `(document.querySelector('#run-approvals .alert') || {}).textContent?.includes("missing property 'comment'")`)
		if got := eval[string](b, `document.querySelector('`+form+` input[name="approver"]').value`); got != "ada" {
			t.Errorf("the refused form lost the approver: %q", got)
		}
		b.screenshot(name + "-approval-refused")
		b.setValue(eval[string](b, `document.querySelector('`+form+` input[name="f.comment"]').id`), "tested on staging")
		b.setValue(eval[string](b, `document.querySelector('`+form+` select[name="f.urgency"]').id`), "high")
		b.setValue(eval[string](b, `document.querySelector('`+form+` input[name="approver"]').id`), "ada")
		b.clickToLoad(form + ` button[value="approve"]`)
		b.until("the approval's notice", `document.body.innerText.includes('Approved: the flow goes on')`)
		s.waitStatus(runID, "completed")
		b.until("the page to show the run completed", `!document.querySelector('#run-approvals form') && document.querySelector('#run-head').innerText.includes('completed')`)
		b.screenshot(name + "-approved")

		runID, _ = s.startFlow(approvalFlow)
		b.open("/runs/" + runID)
		b.until("the approval form", `!!document.querySelector('#run-approvals form.approval button[value="reject"]')`)
		// Reject needs no comment: it skips the form's checks.
		b.clickToLoad(form + ` button[value="reject"]`)
		b.until("the rejection's notice", `document.body.innerText.includes('Rejected:')`)
		failed := s.waitStatus(runID, "failed")
		if !strings.Contains(string(failed.Output)+string(failed.Error), "SuspendedDisapproved") {
			t.Errorf("the rejected run: output %s, error %s", failed.Output, failed.Error)
		}
		b.until("the page to show the run failed", `document.querySelector('#run-head').innerText.includes('failed')`)
		b.screenshot(name + "-rejected")
	})
}
