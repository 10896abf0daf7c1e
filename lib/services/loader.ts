/**
 * Loads the operator's services from `services.d/`. Every valid file is a
 * service of every session; a malformed file is reported and skipped, never
 * half-loaded.
 *
 * @module
 */

import { importLazily } from "../runtime/lazy_import.ts";
import {
  type FileProblem,
  InvalidFileError,
  listTomlFiles,
  type NamedFileKind,
  readNamedTomlFile,
  readOperatorFile,
} from "../config/toml_files.ts";
import { join } from "../runtime/path.ts";
import type { SherlockPaths } from "../config/sherlock_paths.ts";
import type { ValidationCache } from "../config/validation_cache.ts";
import type { Service } from "./schema.ts";

export type { RemoteServer, Service, StdioServer } from "./schema.ts";

/** The services that loaded, and the problems of those that did not. */
export interface ServiceListing {
  /** Valid services, sorted by name. */
  services: Service[];
  /** One problem per malformed file. */
  problems: FileProblem[];
}

/** Loads every file in `services.d/`. */
export async function loadServices(sources: {
  paths: SherlockPaths;
  cache: ValidationCache;
}): Promise<ServiceListing> {
  const services: Service[] = [];
  const problems: FileProblem[] = [];
  for (const file of listTomlFiles(sources.paths.servicesDir)) {
    try {
      const text = readOperatorFile(file.path, "a service");
      if (text === undefined) continue; // Removed since it was listed.
      services.push(
        await readNamedTomlFile(SERVICE_FILE, {
          path: file.path,
          basename: file.name,
          text,
          cache: sources.cache,
        }),
      );
    } catch (error) {
      if (!(error instanceof InvalidFileError)) throw error;
      problems.push(error.problem);
    }
  }
  return { services, problems };
}

/**
 * Loads one service by name (the broker does this for every token request,
 * so that a changed file takes effect at once). Returns undefined when there
 * is no such file; throws `InvalidFileError` when it is malformed.
 */
export async function loadService(
  name: string,
  sources: { paths: SherlockPaths; cache: ValidationCache },
): Promise<Service | undefined> {
  const path = join(sources.paths.servicesDir, `${name}.toml`);
  const text = readOperatorFile(path, "a service");
  if (text === undefined) return undefined;
  return await readNamedTomlFile(SERVICE_FILE, {
    path,
    basename: name,
    text,
    cache: sources.cache,
  });
}

/** True when the broker must supply a token for this service. */
export function needsToken(service: Service): boolean {
  return service.token.source !== "none";
}

const SERVICE_FILE: NamedFileKind<Service> = {
  kind: "service",
  nameKey: ["service", "name"],
  nameOf: (service) => service.service.name,
  loadValidator: async () =>
    (await importLazily<typeof import("./schema.ts")>(
      "lib/services/schema.ts",
    )).validateService,
};
