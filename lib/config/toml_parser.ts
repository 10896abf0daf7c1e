/**
 * The TOML parser, in a module of its own so that it is imported only when
 * a file has to be parsed (see `lazy_import.ts`): a launch whose files all
 * hit the validation cache never loads it.
 *
 * @module
 */

export { parse } from "smol-toml";
