/** Which secret names `sherlock secret set` warns about (lib/cli/secret.ts). */

import assert from "node:assert/strict";
import { unreadSecretProblem } from "../../lib/cli/secret.ts";

const seen = {
  services: [
    { name: "github", source: "secret" },
    { name: "memory", source: "none" },
    { name: "jira", source: "command" },
  ],
  malformed: ["linear"],
};

Deno.test("no warning for a service that reads a secret, or one whose file is malformed", () => {
  assert.equal(unreadSecretProblem("github", seen), undefined);
  assert.equal(unreadSecretProblem("linear", seen), undefined);
});

Deno.test("a typo names the service it resembles; a service with another source says which", () => {
  assert.equal(
    unreadSecretProblem("githb", seen),
    "no service in services.d is named githb (did you mean github?); stored anyway, in case a service reads it later",
  );
  assert.equal(
    unreadSecretProblem("slack", seen),
    "no service in services.d is named slack; stored anyway, in case a service reads it later",
  );
  assert.match(
    unreadSecretProblem("jira", seen)!,
    /^service jira does not read a secret \(\[token\] source = "command", not "secret"\)/,
  );
  // Only services that read a secret are suggested.
  assert.doesNotMatch(unreadSecretProblem("memroy", seen)!, /did you mean/);
});
