-- Everything the tweetkeeper extension defines, one normalized line per fact, in a stable order:
-- run in two databases and diff the outputs to see whether their schemas are the same. Column
-- order counts by position among live columns (ALTER TABLE ... ADD COLUMN appends; a fresh
-- install must list new columns last too); catalog OIDs and dropped columns do not.
WITH ext AS (
  SELECT oid FROM pg_extension WHERE extname = 'tweetkeeper'
), members AS (
  SELECT d.classid, d.objid FROM pg_depend d, ext
   WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e'
), rels AS (
  SELECT c.oid, c.relname, c.relkind FROM pg_class c JOIN members m
      ON m.classid = 'pg_class'::regclass AND m.objid = c.oid
), facts(kind, fact) AS (
  SELECT 'extension', format('version %s, schema %s, relocatable %s', e.extversion,
                             e.extnamespace::regnamespace, e.extrelocatable)
    FROM pg_extension e WHERE e.extname = 'tweetkeeper'
  UNION ALL
  SELECT 'schema', format('%s owner %s acl %s comment %s', n.nspname, n.nspowner::regrole, n.nspacl,
                          obj_description(n.oid, 'pg_namespace')) FROM pg_namespace n
   WHERE n.nspname IN ('tweetkeeper', 'tweetkeeper_internal')
  UNION ALL
  SELECT 'member', pg_describe_object(m.classid, m.objid, 0) FROM members m
  UNION ALL
  SELECT 'dumped', format('%s %s', c.relname, cond)
    FROM pg_extension e, unnest(e.extconfig, e.extcondition) AS x(reloid, cond)
    JOIN pg_class c ON c.oid = x.reloid
   WHERE e.extname = 'tweetkeeper'
  UNION ALL
  SELECT 'relation', format('%s kind %s options %s acl %s comment %s', r.relname, r.relkind,
                            c.reloptions, c.relacl, obj_description(r.oid, 'pg_class'))
    FROM rels r JOIN pg_class c ON c.oid = r.oid
  UNION ALL
  SELECT 'column', format('%s #%s %s %s%s default %s comment %s', r.relname,
                          row_number() OVER (PARTITION BY r.oid ORDER BY a.attnum), a.attname,
                          format_type(a.atttypid, a.atttypmod),
                          CASE WHEN a.attnotnull THEN ' not null' ELSE '' END,
                          pg_get_expr(ad.adbin, ad.adrelid), col_description(r.oid, a.attnum))
    FROM rels r JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
    LEFT JOIN pg_attrdef ad ON ad.adrelid = r.oid AND ad.adnum = a.attnum
  UNION ALL
  SELECT 'constraint', format('%s %s %s', r.relname, co.conname, pg_get_constraintdef(co.oid))
    FROM rels r JOIN pg_constraint co ON co.conrelid = r.oid
  UNION ALL
  SELECT 'index', pg_get_indexdef(i.indexrelid)
    FROM rels r JOIN pg_index i ON i.indrelid = r.oid
  UNION ALL
  SELECT 'trigger', pg_get_triggerdef(t.oid)
    FROM rels r JOIN pg_trigger t ON t.tgrelid = r.oid AND NOT t.tgisinternal
  UNION ALL
  SELECT 'partitioning', format('%s %s', r.relname, pg_get_partkeydef(r.oid))
    FROM rels r WHERE r.relkind = 'p'
  UNION ALL
  SELECT 'partition', format('%s of %s %s', r.relname, i.inhparent::regclass, pg_get_expr(c.relpartbound, c.oid))
    FROM rels r JOIN pg_class c ON c.oid = r.oid JOIN pg_inherits i ON i.inhrelid = r.oid
  UNION ALL
  SELECT 'view', format('%s %s', r.relname, pg_get_viewdef(r.oid))
    FROM rels r WHERE r.relkind = 'v'
  UNION ALL
  SELECT 'sequence', format('%s %s start %s increment %s min %s max %s cache %s cycle %s',
                            r.relname, format_type(s.seqtypid, NULL), s.seqstart, s.seqincrement,
                            s.seqmin, s.seqmax, s.seqcache, s.seqcycle)
    FROM rels r JOIN pg_sequence s ON s.seqrelid = r.oid
  UNION ALL
  SELECT 'function', format('%s acl %s comment %s %s', p.oid::regprocedure, p.proacl,
                            obj_description(p.oid, 'pg_proc'), pg_get_functiondef(p.oid))
    FROM members m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
  UNION ALL
  SELECT 'type', format('%s labels %s acl %s comment %s', t.oid::regtype,
                        (SELECT string_agg(enumlabel, ',' ORDER BY enumsortorder)
                           FROM pg_enum WHERE enumtypid = t.oid),
                        t.typacl, obj_description(t.oid, 'pg_type'))
    FROM members m JOIN pg_type t ON m.classid = 'pg_type'::regclass AND t.oid = m.objid
  UNION ALL
  SELECT 'initial privileges', format('%s %s %s', pg_describe_object(ip.classoid, ip.objoid, ip.objsubid),
                                      ip.privtype, ip.initprivs)
    FROM members m JOIN pg_init_privs ip ON ip.classoid = m.classid AND ip.objoid = m.objid
)
SELECT kind || ': ' || fact FROM facts ORDER BY kind, fact;
