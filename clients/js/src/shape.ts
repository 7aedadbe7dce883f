// A shape: the rows and columns of a table that a snapshot or stream reads, sent as
// ?where= and ?columns= (docs/api.md, "Shapes: ?where= and ?columns=").

/**
 * A shape. `where` is a DuckDB boolean expression over the table's columns (the server's
 * sandbox checks it: a refused or unbindable predicate is a 400 HttpError whose problem
 * has field "where"); `columns` the columns to read, in that order (an empty list reads
 * them all). A cursor read through a shape belongs to it: streaming from it with another
 * shape ends with refresh-required, reason shape_mismatch.
 */
export interface Shape {
  where?: string;
  columns?: string[];
}

/** One column name as ?columns= takes it: in double quotes, quotes doubled, when it holds a comma or a quote (RFC 4180). */
function columnField(name: string): string {
  return /[",]/.test(name) ? `"${name.replaceAll('"', '""')}"` : name;
}

/** Sets q's where and columns parameters from shape; sets nothing for an empty shape. */
export function setShapeParams(q: URLSearchParams, shape: Shape | undefined): void {
  if (shape?.where) q.set('where', shape.where);
  if (shape?.columns && shape.columns.length > 0) q.set('columns', shape.columns.map(columnField).join(','));
}
