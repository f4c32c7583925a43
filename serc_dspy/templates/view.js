(function(){
  var edits=[].slice.call(document.querySelectorAll('a.edit'));
  function openTarget(){
    document.querySelectorAll('.prov.open').forEach(function(p){p.classList.remove('open');});
    var id=decodeURIComponent(location.hash.slice(1)); if(!id) return;
    var el=document.getElementById(id);
    if(el&&el.classList.contains('prov')){el.classList.add('open');
      document.body.setAttribute('data-revealed',id);}
  }
  window.addEventListener('hashchange',openTarget); openTarget();
  function mark(node,on){
    document.querySelectorAll('.edge').forEach(function(e){
      if(e.getAttribute('data-a')===node||e.getAttribute('data-b')===node)
        e.classList.toggle('hl',on);});
    edits.forEach(function(a){
      if((' '+a.getAttribute('data-facts')+' ').indexOf(' '+node+' ')>=0)
        a.classList.toggle('hl',on);});
  }
  document.querySelectorAll('.graph .node').forEach(function(g){
    var n=g.getAttribute('data-node'); g.classList.toggle('hl',false);
    ['mouseenter','focus'].forEach(function(ev){g.addEventListener(ev,function(){
      g.classList.add('hl');mark(n,true);});});
    ['mouseleave','blur'].forEach(function(ev){g.addEventListener(ev,function(){
      g.classList.remove('hl');mark(n,false);});});
  });
  document.addEventListener('keydown',function(e){
    if(e.target&&/input|textarea/i.test(e.target.tagName)) return;
    if(e.key!=='n'&&e.key!=='p') return;
    var i=edits.indexOf(document.activeElement);
    i=e.key==='n'?Math.min(edits.length-1,i+1):Math.max(0,i-1);
    if(edits[i]) edits[i].focus();
  });
})();
